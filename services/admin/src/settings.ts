export const ADMIN_SETTINGS = Symbol('AdminSettings');

/** What the admin module needs from its environment, resolved once at start. */
export interface AdminSettings {
  cookieSecure: boolean;
  publicUrl: string;
}
