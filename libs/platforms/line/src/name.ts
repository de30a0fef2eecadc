export const LINE = 'line';
