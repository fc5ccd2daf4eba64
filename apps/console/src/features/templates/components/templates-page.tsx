import { TEMPLATE_MATCH_RULE, type Template } from '@school/contract';
import { useState } from 'react';
import { EmptyState, ErrorState, Loading } from '../../../components/ui/status';
import { useTemplates } from '../api/get-templates';
import type { TemplateFormValues } from '../utils/template-form';
import { MissingTemplates } from './missing-templates';
import { TemplateForm } from './template-form';
import { TemplatesTable } from './templates-table';
import '../templates.css';

export function TemplatesPage() {
  const templates = useTemplates();
  const [editing, setEditing] = useState<Template | null>(null);
  /** A new template started from a type received without one; `n` remounts the form for each. */
  const [draft, setDraft] = useState<{ n: number; values: TemplateFormValues } | null>(null);
  const [message, setMessage] = useState('');
  const generic = templates.data?.find((t) => t.type === '*');

  return (
    <div className="page templates-page">
      <title>Templates · School Messaging</title>
      <h1>Templates</h1>
      <p className="hint">
        The title and body of the push each notification type sends. A type without a template of its own gets
        the generic one (<code>*</code>).
      </p>
      <p className="hint match-rule">{TEMPLATE_MATCH_RULE}</p>

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
            setDraft(null);
            setEditing(template);
          }}
        />
      )}
      <p role="status" className="page-status">
        {message}
      </p>

      <MissingTemplates
        onCreate={(type) => {
          setMessage('');
          setEditing(null);
          // Started from what the type gets now, the generic template's wording.
          setDraft((d) => ({
            n: (d?.n ?? 0) + 1,
            values: { type, title: generic?.title ?? '', body: generic?.body ?? '' },
          }));
        }}
      />
      <TemplateForm
        key={editing ? editing.id : `new-${draft?.n ?? 0}`}
        editing={editing}
        draft={draft?.values ?? null}
        onSaving={() => setMessage('')}
        onCancel={() => setEditing(null)}
        onSaved={(template, created) => {
          setEditing(null);
          setDraft(null);
          setMessage(
            `${created ? 'Added' : 'Saved'} the ${template.type === '*' ? 'generic' : template.type} template.`,
          );
        }}
      />
    </div>
  );
}
