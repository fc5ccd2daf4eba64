import type { School } from '@school/contract';
import { useState } from 'react';
import { useSearchParams } from 'react-router';
import { EmptyState, ErrorState, Loading } from '../../../components/ui/status';
import { useSchools } from '../../../lib/schools';
import { BASE_URL_PARAM, emptySchool } from '../utils/school-form';
import { SchoolForm } from './school-form';
import { SchoolsTable } from './schools-table';

export function SchoolsPage() {
  const schools = useSchools();
  const [editing, setEditing] = useState<School | null>(null);
  const [message, setMessage] = useState('');
  // /schools?baseUrl=…: a school to register, as the Send page links to it after "Unknown school".
  const [search, setSearch] = useSearchParams();
  const newBaseUrl = search.get(BASE_URL_PARAM);
  const draft = newBaseUrl ? { ...emptySchool, baseUrl: newBaseUrl } : null;

  return (
    <div className="page schools-page">
      <title>Schools · School Messaging</title>
      <h1>Schools</h1>
      <p className="hint">
        The schools SendNotificationType and SendMarkNotes accept, by the base URL they send, each with its
        push topic and, if set, the callers allowed to send for it.
      </p>

      {schools.isPending ? (
        <Loading>Loading schools…</Loading>
      ) : schools.isError ? (
        <ErrorState
          error={schools.error}
          title="Could not load the schools"
          onRetry={() => schools.refetch()}
        />
      ) : schools.data.length === 0 ? (
        <EmptyState>No schools registered yet: every push will be refused until one is added.</EmptyState>
      ) : (
        <SchoolsTable
          schools={schools.data}
          onEdit={(school) => {
            setMessage('');
            setEditing(school);
          }}
        />
      )}
      <p role="status" className="page-status">
        {message}
      </p>

      <SchoolForm
        key={editing?.id ?? `new-${newBaseUrl ?? ''}`}
        editing={editing}
        draft={draft}
        onSaving={() => setMessage('')}
        onCancel={() => setEditing(null)}
        onSaved={(school, created) => {
          setEditing(null);
          if (newBaseUrl) setSearch({}, { replace: true });
          setMessage(created ? `Added ${school.name} (topic ${school.topic}).` : `Saved ${school.name}.`);
        }}
      />
    </div>
  );
}
