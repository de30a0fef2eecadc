// The package's public surface, by name: what the other packages and the tests use. Modules not
// named here are internal.
export { DiscordRest, DiscordApiError, splitContent, DISCORD_MAX_CONTENT } from './rest.js';
export { discordGatewayProtocol, DISCORD_INTENTS, DiscordSession } from './gateway.js';
export { DiscordMessage, messageToChain, messageToQuery, chainToContent } from './convert.js';
export { discordConnection, sendWhole } from './connection.js';
export { DiscordAdapter, DISCORD_EDIT_EVERY } from './adapter.js';
export { discordPlatform } from './platform.js';
