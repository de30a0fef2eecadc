export const DINGTALK = 'dingtalk';
