/** NATS header names Conveyor reads or writes besides W3C trace context. */
export const HEADERS = {
  /** JetStream de-duplication id. */
  msgId: 'Nats-Msg-Id',
  /** The query a message belongs to, so tooling can follow one message without parsing payloads. */
  queryId: 'Conveyor-Query-Id',
  /** Schema of the payload, `<name>/<version>`. */
  schema: 'Conveyor-Schema',
} as const;
