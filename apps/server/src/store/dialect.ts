/** The two databases the store runs on (docs/deployment.md). */
export type DialectName = 'sqlite' | 'postgres';
