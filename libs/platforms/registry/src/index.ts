import { onebotPlatform } from '@conveyor/onebot';
import { PlatformRegistry } from './registry.js';

export { PlatformRegistry } from './registry.js';

/**
 * Every platform Conveyor speaks. Adding one is a package under libs/platforms/<name> and one line
 * here (see `Platform` in @conveyor/platform-kit).
 */
export const platforms = new PlatformRegistry([
  onebotPlatform,
]);
