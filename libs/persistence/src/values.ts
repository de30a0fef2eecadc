/** QueryRecord.status values, in lifecycle order. */
export const QUERY_STATUSES = ['accepted', 'running', 'succeeded', 'failed'] as const;
export type QueryStatus = (typeof QUERY_STATUSES)[number];
