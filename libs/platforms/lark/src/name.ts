export const LARK = 'lark';
