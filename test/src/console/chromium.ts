// What the console's browser tests share: Debian's Chromium, headless, and the console's language.
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/** The console's languages (apps/console/src/i18n/i18n.ts). */
export const CONSOLE_LOCALES = ['zh-Hans', 'en', 'zh-Hant', 'ja', 'ko', 'ru', 'vi'] as const;
export type ConsoleLocale = (typeof CONSOLE_LOCALES)[number];

/** Where the console keeps the reader's language choice (apps/console/src/i18n/i18n.ts). */
export const CONSOLE_LANGUAGE_KEY = 'conveyor-console-language';

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** Every page the target opens from now on starts with this language chosen, whatever the browser's. */
export async function pinLocale(target: Page | BrowserContext, locale: ConsoleLocale): Promise<void> {
  await target.addInitScript(`localStorage.setItem(${JSON.stringify(CONSOLE_LANGUAGE_KEY)}, ${JSON.stringify(locale)})`);
}

/** Opens the console at `url` and signs in as the admin (the harness's password); resolves once the navigation shows. */
export async function signIn(page: Page, url: string, password: string): Promise<void> {
  await page.goto(`${url}/`);
  await page.fill('#username', 'admin');
  await page.fill('#password', password);
  await page.click('main.signin button[type=submit]');
  await page.locator('nav.sidebar').waitFor();
}
