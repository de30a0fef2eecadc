export const SLACK = 'slack';
