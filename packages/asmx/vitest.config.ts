import { defineProject } from 'vitest/config';

export default defineProject({ test: { name: 'asmx', include: ['test/**/*.test.ts'] } });
