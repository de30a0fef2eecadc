// The package's public surface, by name: what the other packages and the tests use. Modules not
// named here are internal.
export { decryptWecom, encryptWecom, sortedSha1, verifySortedSha1, wecomSignature } from './verify.js';
export { EncryptedEnvelope, digits, parseWechatFamilyMessage, parseXmlFields } from './parse.js';
export {
  ApiAnswer, TokenAnswer, WecomApiError, callWechatApi, isTokenRejected, wecomDownloadMedia, wecomGetToken,
} from './api.js';
export { splitUtf8 } from './adapter.js';
export {
  WECOM_CALLBACK_BODY_LIMIT, openWecomCallback, wecomPlatform, wecomSignedParams,
} from './platform.js';
