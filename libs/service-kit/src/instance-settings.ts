// The instance settings row (written through the admin API), read once and kept until its
// `config.changed` event (kind `settings`) or a reconnect drops it, so a change applies to the next
// message. The safety TTL bounds staleness if an event is lost while the connection stays up.
import { AdminApi, CONFIG_CACHE_SAFETY_TTL_MS } from '@conveyor/contracts';
import { effectiveInstanceSettings, type EffectiveInstanceSettings, type InstanceDefaults } from '@conveyor/pipeline';
import { currentTraceId } from '@conveyor/telemetry';
import type { Infra } from './infra.js';

/** What the source needs of the service's infrastructure (a test passes these alone). */
export interface InstanceSettingsDeps {
  prisma: Pick<Infra['prisma'], 'instanceSettings'>;
  configCaches: Infra['configCaches'];
  logger: { error(obj: object, msg: string): void };
}

export class InstanceSettingsSource {
  private pending: Promise<EffectiveInstanceSettings> | undefined;
  private loadedAt = 0;

  constructor(private readonly infra: InstanceSettingsDeps, private readonly defaults: InstanceDefaults, private readonly ttlMs = CONFIG_CACHE_SAFETY_TTL_MS) {
    infra.configCaches.register((event) => {
      if (!event || event.kind === 'settings') this.pending = undefined;
    });
  }

  /** The settings the next message uses. A database error propagates (the message is retried). */
  current(): Promise<EffectiveInstanceSettings> {
    if (!this.pending || Date.now() - this.loadedAt > this.ttlMs) {
      this.loadedAt = Date.now();
      const load = this.load();
      this.pending = load;
      // A failed read is not kept: the next message reads again.
      load.catch(() => {
        if (this.pending === load) this.pending = undefined;
      });
    }
    return this.pending;
  }

  private async load(): Promise<EffectiveInstanceSettings> {
    const row = await this.infra.prisma.instanceSettings.findUnique({ where: { id: AdminApi.INSTANCE_SETTINGS_ID } });
    const parsed = AdminApi.InstanceSettingsValues.safeParse(row?.values ?? {});
    if (!parsed.success) this.infra.logger.error({ traceId: currentTraceId(), issues: parsed.error.issues.slice(0, 3).map((i) => `${i.path.join('.')}: ${i.message}`) }, 'stored instance settings are invalid; using the deployment defaults');
    return effectiveInstanceSettings(parsed.success ? parsed.data : AdminApi.InstanceSettingsValues.parse({}), this.defaults);
  }
}
