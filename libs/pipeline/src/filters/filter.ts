/** A content filter's verdict (LangBot's FilterResult). */
export interface FilterResult {
  level: 'pass' | 'warn' | 'masked' | 'block';
  replacement: string;
  userNotice?: string;
  consoleNotice?: string;
}

export interface ContentFilter {
  readonly name: string;
  readonly stages: ReadonlyArray<'pre' | 'post'>;
  check(message: string): FilterResult;
}
