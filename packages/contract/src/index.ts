export * from './operations.js';
export * from './validate.js';
export * from './api.js';
