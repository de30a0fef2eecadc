export * from './template.js';
export * from './chunk.js';
export * from './embeddings.js';
export * from './rerank.js';
export * from './retrieval.js';
export * from './ingest.js';
