import type { ServiceHarness } from './services.js';

/** Every log line of the gateway replicas, dead ones included. */
export function gatewayLogs(services: ServiceHarness): string[] {
  return services.services.filter((s) => s.name === 'gateway').flatMap((s) => s.logs);
}

/** The live gateway replica whose log says it opened the bot's connection last (any bot's without `botId`). */
export function gatewayHolder(services: ServiceHarness, botId?: string): string | undefined {
  let best: { instance: string; at: string } | undefined;
  for (const s of services.services.filter((x) => x.name === 'gateway' && x.child.exitCode === null && x.child.signalCode === null)) {
    for (const line of s.logs) {
      if (!line.includes('platform connection open') || (botId !== undefined && !line.includes(botId))) continue;
      const at = (JSON.parse(line) as { time: string }).time;
      if (!best || at > best.at) best = { instance: s.instance, at };
    }
  }
  return best?.instance;
}
