import { appKey } from '@conveyor/platform-kit';
import type { WecomCsConfig } from './config.js';

/** The shared token's app: the customer-service secret's (it is not the corp's app secrets' token). */
export function tokenApp(config: WecomCsConfig): string {
  return appKey(config.api_base_url, config.corpid, config.secret);
}
