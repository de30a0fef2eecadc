export { MatrixConfigSchema, parseMatrixConfig, type MatrixConfig } from './config.js';
export { MatrixRest, MatrixApiError, SyncResponse, MAX_RESPONSE_BYTES, type MatrixRestOptions } from './rest.js';
export {
  MatrixMessageEvent,
  isDirectRoom,
  mentionsBot,
  stripReplyFallback,
  skipReason,
  messageToChain,
  messageToQuery,
  chainToContent,
  textContent,
  editContent,
  type MatrixRoomInfo,
  type MatrixSelf,
} from './convert.js';
export { matrixConnection, sendWhole, txnIdOf, isLostPosition, MatrixSyncState, SYNC_FILTER, SYNC_TIMEOUT_MS, MATRIX_MAX_BODY } from './connection.js';
export { MatrixAdapter, MATRIX_EDIT_EVERY } from './adapter.js';
export { matrixPlatform } from './platform.js';
