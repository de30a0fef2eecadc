/** Anything that stops the migration runner; the message says what to do about it. */
export class MigrationError extends Error {
  override name = 'MigrationError';
}
