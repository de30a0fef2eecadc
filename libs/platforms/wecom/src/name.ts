export const WECOM = 'wecom';
