export { JetStreamServer, type JetStreamServerOptions, type JetStreamBinding } from './jetstream.server.js';
export { JetStreamContext } from './jetstream.context.js';
export { JetStreamExceptionFilter } from './jetstream-exception.filter.js';
