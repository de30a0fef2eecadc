export const WECOM_CS = 'wecomcs';
