import { dingtalkPlatform } from '@conveyor/dingtalk';
import { discordPlatform } from '@conveyor/discord';
import { kookPlatform } from '@conveyor/kook';
import { qqOfficialPlatform } from '@conveyor/qqofficial';
import { satoriPlatform } from '@conveyor/satori';
import { matrixPlatform } from '@conveyor/matrix';
import { httpBotPlatform } from '@conveyor/http-bot';
import { larkPlatform } from '@conveyor/lark';
import { linePlatform } from '@conveyor/line';
import { officialAccountPlatform } from '@conveyor/officialaccount';
import { onebotPlatform } from '@conveyor/onebot';
import { slackPlatform } from '@conveyor/slack';
import { telegramPlatform } from '@conveyor/telegram';
import { webChatPlatform } from '@conveyor/webchat';
import { wecomPlatform } from '@conveyor/wecom';
import { wecomBotPlatform } from '@conveyor/wecombot';
import { wecomCsPlatform } from '@conveyor/wecomcs';
import { PlatformRegistry } from './registry.js';

export { PlatformRegistry } from './registry.js';
/** What callers of the registry need to judge a platform without depending on the kit themselves. */
export { holdsConnection, type Platform } from '@conveyor/platform-kit';

/**
 * Every platform Conveyor speaks. Adding one is a package under libs/platforms/<name> and one line
 * here (see `Platform` in @conveyor/platform-kit).
 */
export const platforms = new PlatformRegistry([
  httpBotPlatform,
  telegramPlatform,
  webChatPlatform,
  slackPlatform,
  linePlatform,
  onebotPlatform,
  larkPlatform,
  wecomPlatform,
  discordPlatform,
  dingtalkPlatform,
  officialAccountPlatform,
  wecomCsPlatform,
  wecomBotPlatform,
  kookPlatform,
  qqOfficialPlatform,
  satoriPlatform,
  matrixPlatform,
]);
