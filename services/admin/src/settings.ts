export const ADMIN_SETTINGS = Symbol('AdminSettings');

/** What the admin module needs from its environment, resolved once at start. */
export interface AdminSettings {
  /**
   * Mark the session cookie Secure: always, never, or (`request`) when the sign-in itself came over
   * HTTPS, as the connection or a trusted proxy's X-Forwarded-Proto says.
   */
  cookieSecure: boolean | 'request';
  publicUrl: string;
  /** Where platforms reach the ingress (INGRESS_PUBLIC_URL), no trailing slash: the bots' webhook URLs start with it. */
  ingressPublicUrl: string | undefined;
}
