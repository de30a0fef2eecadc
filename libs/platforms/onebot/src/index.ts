// The package's public surface, by name: what the other packages and the tests use. Modules not
// named here are internal.
export { parseFrame, type Frame, type MessageEvent, type Segment } from './parse.js';
export { segmentsToChain, chainToSegments, type InboundContext } from './convert.js';
export { parseCqString } from './cq-code.js';
export { OneBotSocket, OneBotActionError, type OneBotSocketOptions } from './socket.js';
export { oneBotConnection, eventToQuery } from './connection.js';
export { onebotPlatform } from './platform.js';
export { listenReverse, presentedToken, type ReverseListener } from './reverse.js';
