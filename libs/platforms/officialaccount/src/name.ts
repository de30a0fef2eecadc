export const OFFICIAL_ACCOUNT = 'officialaccount';
