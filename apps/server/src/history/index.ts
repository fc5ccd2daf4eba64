// History: the recorded calls as staff read them (lists, filters, free-text search, exports, the
// live tail). What other folders use of it.
export { CALL_FILTERS, type CallCursor, type CallQuery, matchesCall } from './call-filters.js';
export { createHistory, type History, type TextSearchPage } from './calls.js';
export type { LiveTail } from './live-tail.js';
export { SearchBusyError, SearchClosedError } from './search.js';
