import type { School } from '@school/contract';
import { useState } from 'react';
import { EmptyState, ErrorState, Loading } from '../../../components/ui/status';
import { useSchools } from '../api/get-schools';
import { SchoolForm } from './school-form';
import { SchoolsTable } from './schools-table';

export function SchoolsPage() {
  const schools = useSchools();
  const [editing, setEditing] = useState<School | null>(null);
  const [message, setMessage] = useState('');

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
        key={editing?.id ?? 'new'}
        editing={editing}
        onSaving={() => setMessage('')}
        onCancel={() => setEditing(null)}
        onSaved={(school, created) => {
          setEditing(null);
          setMessage(created ? `Added ${school.name} (topic ${school.topic}).` : `Saved ${school.name}.`);
        }}
      />
    </div>
  );
}
