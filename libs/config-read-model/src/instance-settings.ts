// The instance settings (written through the admin API) as the next message applies them: the
// configuration read model keeps the stored row until its `config.changed` event (kind `settings`)
// or a reconnect drops it; this adds the deployment's defaults and says once per read when the
// stored row is unusable (the logger adds the message's trace id).
import type { ConfigReadModel, StoredInstanceSettings } from './read-model.js';
import { AdminApi } from '@conveyor/contracts';
import { effectiveInstanceSettings, type EffectiveInstanceSettings, type InstanceDefaults } from '@conveyor/pipeline';

/** What the source needs of the service's infrastructure (a test passes these alone). */
export interface InstanceSettingsDeps {
  config: Pick<ConfigReadModel, 'instanceSettings'>;
  logger: { error(obj: object, msg: string): void };
}

export class InstanceSettingsSource {
  private applied: { stored: StoredInstanceSettings; effective: EffectiveInstanceSettings } | undefined;

  constructor(private readonly infra: InstanceSettingsDeps, private readonly defaults: InstanceDefaults) {}

  /** The settings the next message uses. A database error propagates (the message is retried). */
  async current(): Promise<EffectiveInstanceSettings> {
    const stored = await this.infra.config.instanceSettings();
    // The read model hands out the same object until the row is read again.
    if (this.applied?.stored !== stored) {
      if (!stored.ok) this.infra.logger.error({ issues: stored.issues }, 'stored instance settings are invalid; using the deployment defaults');
      this.applied = { stored, effective: effectiveInstanceSettings(stored.ok ? stored.values : AdminApi.InstanceSettingsValues.parse({}), this.defaults) };
    }
    return this.applied.effective;
  }
}
