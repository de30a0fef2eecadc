// The package's public surface, by name: what the other packages and the tests use. Modules not
// named here are internal.
export { TelegramAdapter } from './adapter.js';
export { telegramPlatform } from './platform.js';
