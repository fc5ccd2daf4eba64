import { useSearchParams } from 'react-router';
import { EmptyState, ErrorState, Loading } from '../../../components/ui/status';
import { isOrganisationAdmin, useSession } from '../../../lib/session';
import { useUsers } from '../../../lib/users';
import { useAudit } from '../api/get-audit';
import { type AuditFilters, filtersFromSearch, filtersToSearch, hasFilters } from '../utils/filters';
import { AuditTable } from './audit-table';
import { FiltersForm } from './filters-form';
import '../audit.css';

export function AuditPage() {
  const [searchParams, setSearchParams] = useSearchParams();
  const filters = filtersFromSearch(searchParams);
  const audit = useAudit(filters);
  const setFilters = (next: AuditFilters) => setSearchParams(filtersToSearch(next));
  const entries = audit.data?.pages.flatMap((page) => page.items) ?? [];
  // Everyone's entries for an admin of every school; anyone else's own only (the server's rule).
  const everyone = isOrganisationAdmin(useSession().data);
  // To name people by their display names, and to pick one in the filter.
  const users = useUsers({ enabled: everyone }).data?.items ?? [];

  return (
    <div className="page audit-page">
      <title>Audit · School Messaging</title>
      <h1>Audit</h1>
      <p className="hint">
        {everyone
          ? 'Who did what in the console, newest first: logins, sends, and every change to books, schools, templates, deliveries and users.'
          : 'What you did in the console, newest first: your logins, sends and retries.'}{' '}
        Passwords are never recorded.
      </p>
      <FiltersForm filters={filters} onChange={setFilters} users={everyone ? users : undefined} />

      {audit.isPending ? (
        <Loading>Loading the audit log…</Loading>
      ) : !audit.data ? (
        <ErrorState
          error={audit.error}
          title="Could not load the audit log"
          onRetry={() => audit.refetch()}
        />
      ) : entries.length === 0 ? (
        <EmptyState>
          {hasFilters(filters) ? 'No entries match these filters.' : 'Nothing has been recorded yet.'}
        </EmptyState>
      ) : (
        <>
          <AuditTable entries={entries} users={users} />
          <div className="paging">
            {audit.hasNextPage ? (
              <button
                type="button"
                className="button"
                onClick={() => audit.fetchNextPage()}
                disabled={audit.isFetchingNextPage}
              >
                {audit.isFetchingNextPage ? 'Loading more…' : 'Load more'}
              </button>
            ) : (
              <p className="muted">
                {entries.length === 1
                  ? 'This is the only entry.'
                  : `All ${entries.length} entries are shown.`}
              </p>
            )}
            {audit.isFetchNextPageError ? (
              <ErrorState
                error={audit.error}
                title="Could not load more"
                onRetry={() => audit.fetchNextPage()}
              />
            ) : null}
          </div>
        </>
      )}
    </div>
  );
}
