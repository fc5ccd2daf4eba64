// The refusal reasons are the contract's, shared with the server's audit (packages/contract/src/verdict.ts).
export { refusalReason } from '@school/contract';
