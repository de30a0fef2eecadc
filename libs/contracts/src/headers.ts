/** NATS header names Conveyor reads or writes besides W3C trace context. */
export const HEADERS = {
  /** JetStream de-duplication id. */
  msgId: 'Nats-Msg-Id',
  /** The query a message belongs to, so tooling can follow one message without parsing payloads. */
  queryId: 'Conveyor-Query-Id',
  /** Schema of the payload, `<name>/<version>`. */
  schema: 'Conveyor-Schema',
  /** On a plugin's reply: its handler failed, with this text; the host goes on without the plugin. */
  pluginError: 'Conveyor-Plugin-Error',
} as const;
