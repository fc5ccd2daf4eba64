import type { Template } from '@school/contract';
import { useState } from 'react';
import { EmptyState, ErrorState, Loading } from '../../../components/ui/status';
import { useTemplates } from '../api/get-templates';
import { TemplateForm } from './template-form';
import { TemplatesTable } from './templates-table';
import '../templates.css';

export function TemplatesPage() {
  const templates = useTemplates();
  const [editing, setEditing] = useState<Template | null>(null);
  const [message, setMessage] = useState('');

  return (
    <div className="page templates-page">
      <title>Templates · School Messaging</title>
      <h1>Templates</h1>
      <p className="hint">
        The title and body of the push each notification type sends. A type without a template of its own gets
        the generic one (<code>*</code>).
      </p>

      {templates.isPending ? (
        <Loading>Loading templates…</Loading>
      ) : templates.isError ? (
        <ErrorState
          error={templates.error}
          title="Could not load the templates"
          onRetry={() => templates.refetch()}
        />
      ) : templates.data.length === 0 ? (
        <EmptyState>No templates.</EmptyState>
      ) : (
        <TemplatesTable
          templates={templates.data}
          onEdit={(template) => {
            setMessage('');
            setEditing(template);
          }}
        />
      )}
      <p role="status" className="page-status">
        {message}
      </p>

      <TemplateForm
        key={editing?.id ?? 'new'}
        editing={editing}
        onSaving={() => setMessage('')}
        onCancel={() => setEditing(null)}
        onSaved={(template, created) => {
          setEditing(null);
          setMessage(
            `${created ? 'Added' : 'Saved'} the ${template.type === '*' ? 'generic' : template.type} template.`,
          );
        }}
      />
    </div>
  );
}
