import { GatewaySession, type HeartbeatGatewayOptions } from '@conveyor/gateway';

/** GUILDS | GUILD_MESSAGES | DIRECT_MESSAGES | MESSAGE_CONTENT: guild and DM messages with their text. */
export const DISCORD_INTENTS = (1 << 0) | (1 << 9) | (1 << 12) | (1 << 15);

/** Close codes after which connecting again with the same settings cannot work (Discord Gateway v10). */
const FATAL_CLOSE: Readonly<Record<number, string>> = {
  4004: 'authentication failed (the bot token is wrong)',
  4010: 'invalid shard',
  4011: 'sharding required',
  4012: 'invalid API version',
  4013: 'invalid intents',
  4014: 'disallowed intents (enable the Message Content intent for the application)',
};

/** A Discord session as the next connection of the bot resumes it (id, resume URL, sequence number, the bot's user id). */
export const DiscordSession = GatewaySession;
export type DiscordSession = GatewaySession;

/** What Discord's Gateway v10 (JSON) asks of the opcode gateway client: the query, IDENTIFY with the bot token and the intents, its fatal close codes. */
export function discordGatewayProtocol(token: string): Pick<HeartbeatGatewayOptions, 'query' | 'identify' | 'resumeToken' | 'fatalClose'> {
  return {
    query: { v: '10', encoding: 'json' },
    identify: () => ({ token, intents: DISCORD_INTENTS, properties: { os: process.platform, browser: 'conveyor', device: 'conveyor' } }),
    resumeToken: token,
    fatalClose: FATAL_CLOSE,
  };
}
