// History: the recorded calls as staff read them (lists, filters, free-text search, exports, the
// live tail). What other folders use of it.
export { type CallCursor, type CallQuery, matchesCall } from './call-filters.js';
export { createHistory, type History, type RowScan, type TextSearchPage } from './calls.js';
export { SearchBusyError, SearchClosedError } from './search.js';
