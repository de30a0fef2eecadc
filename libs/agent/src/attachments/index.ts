export * from './address-policy.js';
export * from './image-fetch.js';
export * from './inline-images.js';
