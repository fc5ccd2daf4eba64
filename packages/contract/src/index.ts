export * from './api.js';
export * from './auth.js';
export * from './next-path.js';
export * from './operation-input.js';
export * from './operations.js';
export * from './phone-examples.js';
export * from './template.js';
export * from './validate.js';
