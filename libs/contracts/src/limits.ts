/** Bounds shared by every service. Changing one is a contract change: producers and consumers must agree. */
export const LIMITS = {
  /** LangBot's HTTP-bot adapter rejects bodies above 1 MiB with 413/41301. */
  inboundBodyBytes: 1_048_576,
  /** NATS' default max_payload is 1 MiB; envelopes carry the inbound chain plus routing, so they get the same bound. */
  busPayloadBytes: 1_048_576,
  /**
   * Bytes of one image a platform passes on inline (base64) because its media needs the bot's
   * credentials to read (Matrix, WeChat customer service): room is left in a bus message for the
   * rest of the query. A larger one becomes `[Image]`.
   */
  inlineImageBytes: 512 * 1024,
  /** Dead letters keep at most this much of the offending payload (base64 of the raw bytes). */
  deadLetterPayloadBytes: 64 * 1024,
  /** Deliveries of one bus message before it goes to the dead letters. */
  maxDeliver: 5,
  /** History messages the orchestrator puts into one run request, newest kept. */
  historyMessages: 200,
  /** LangBot's cap on tool rounds in the local agent. */
  toolRounds: 128,
  /** Characters of an id the ingress takes from a platform (session, sender, chat): ids key Redis and Postgres rows. */
  idChars: 256,
  /** Characters of a display name the ingress takes from a platform (sender name, group name, chat title). */
  nameChars: 1000,
  /** Characters of an HTTP-bot `X-LB-Idempotency-Key`; it becomes part of the JetStream de-duplication id. */
  idempotencyKeyChars: 256,
  /** Components of one message chain (its top level). */
  messageChainComponents: 1000,
  /**
   * How deep Quote origins and Forward nodes may nest (the chain itself is level 0). Recursive
   * validators use stack per level: an unbounded chain could exhaust it instead of failing validation.
   */
  messageChainDepth: 32,
  /** LangBot's MAX_BUFFER_MESSAGES: messages merged into one query by message aggregation. */
  aggregatedMessages: 10,
  /**
   * Bytes of envelope JSON merged into one query: half the bus bound, so the run request carrying the
   * merged user turn keeps room for the preset and history within the bus bound.
   */
  aggregatedBytes: 524_288,
  /** Knowledge bases one run retrieves from (`ai.local-agent.knowledge-bases`). */
  knowledgeBasesPerRun: 64,
  /** LangBot sends at most this many retrieved entries to a rerank model. */
  rerankDocuments: 64,
  /** Bytes of one knowledge base document as added (before its text is extracted). */
  knowledgeDocumentBytes: 20 * 1_048_576,
  /** Characters of text extracted from one document; past it the document fails instead of filling the database. */
  knowledgeDocumentChars: 5_000_000,
  /** Chunks of one knowledge base: exact search scans them all, so the scan stays bounded. */
  knowledgeBaseChunks: 250_000,
  /** Texts sent in one `/embeddings` request. */
  embeddingBatch: 64,
} as const;
