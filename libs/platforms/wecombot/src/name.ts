export const WECOM_BOT = 'wecombot';
