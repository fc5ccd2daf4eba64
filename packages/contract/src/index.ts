export * from './operations.js';
export * from './validate.js';
