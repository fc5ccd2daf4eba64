import { TEMPLATE_PLACEHOLDERS, type Template } from '@school/contract';
import { useId } from 'react';
import { useFormContext, useWatch } from 'react-hook-form';
import { Form, TextAreaField, TextField } from '../../../components/ui/form';
import { FocusField, SaveActions, saveOnSubmit } from '../../../components/ui/save-form';
import { KeepDraft } from '../../../lib/draft';
import { useCreateTemplate } from '../api/create-template';
import { useUpdateTemplate } from '../api/update-template';
import { exampleValues, fillTemplate, GENERIC_TYPE, PLACEHOLDER_DESCRIPTIONS } from '../utils/preview';
import { emptyTemplate as empty, type TemplateFormValues, templateFormSchema } from '../utils/template-form';

const FIELDS = ['type', 'title', 'body'] as const;

/**
 * Adds a template for a notification type, or with `editing` changes one. `draft` starts a new
 * one filled in (a type received without a template), its title focused.
 */
export function TemplateForm({
  editing,
  draft,
  onSaving,
  onSaved,
  onCancel,
}: {
  editing: Template | null;
  draft?: TemplateFormValues | null;
  /** A save starts: an earlier "Saved." no longer applies. */
  onSaving: () => void;
  onSaved: (template: Template, created: boolean) => void;
  onCancel: () => void;
}) {
  const create = useCreateTemplate();
  const update = useUpdateTemplate();
  const save = editing ? update : create;
  const generic = editing?.type === GENERIC_TYPE;
  const headingId = useId();

  return (
    <section className="card" aria-labelledby={headingId}>
      <h2 id={headingId}>
        {editing
          ? generic
            ? 'Edit the generic template (*)'
            : `Edit the ${editing.type} template`
          : 'Add a template'}
      </h2>
      <Form
        schema={templateFormSchema}
        options={{
          // Checked as typed: an unknown placeholder is flagged at once, not on saving.
          mode: 'onChange',
          defaultValues: editing
            ? { type: editing.type, title: editing.title, body: editing.body }
            : (draft ?? empty),
        }}
        aria-labelledby={headingId}
        className="template-form"
        onSubmit={saveOnSubmit({ editing, create, update, empty, fields: FIELDS, onSaving, onSaved })}
      >
        {() => (
          <div className="template-layout">
            <div>
              {editing ? (
                <FocusField name={generic ? 'title' : 'type'} />
              ) : draft ? (
                <FocusField name="title" />
              ) : (
                // A new template's text is kept in the tab until it is added.
                <KeepDraft draftKey="template:new" />
              )}
              <TextField
                name="type"
                label="Notification type"
                description={
                  generic
                    ? 'The generic template keeps its type (*): it is used for every type without a template of its own.'
                    : 'The type as apps send it in TypeNotfication, in any case (no spaces); marks is the SendMarkNotes push.'
                }
                readOnly={generic}
                autoComplete="off"
                spellCheck={false}
              />
              <TextField
                name="title"
                label="Title"
                description="The push notification's title."
                autoComplete="off"
              />
              <TextAreaField name="body" label="Body" description="The push notification's text." rows={4} />
              <SaveActions
                save={save}
                editing={editing !== null}
                addLabel="Add template"
                onCancel={onCancel}
              />
            </div>
            <div>
              <Placeholders />
              <Preview />
            </div>
          </div>
        )}
      </Form>
    </section>
  );
}

function useTyped() {
  const { control } = useFormContext<typeof empty>();
  const [type = '', title = '', body = ''] = useWatch({ control, name: ['type', 'title', 'body'] });
  return { type: type.trim(), title, body };
}

/** The placeholders a title or body may use, with the value each has in the preview. */
function Placeholders() {
  const { type } = useTyped();
  const values = exampleValues(type);
  const headingId = useId();
  return (
    <section aria-labelledby={headingId} className="placeholders">
      <h3 id={headingId}>Placeholders</h3>
      <dl className="summary">
        {TEMPLATE_PLACEHOLDERS.map((placeholder) => {
          const example = fillTemplate(placeholder, values);
          return (
            <div key={placeholder} className="placeholder">
              <dt>
                <code>{placeholder}</code>
              </dt>
              <dd>
                {PLACEHOLDER_DESCRIPTIONS[placeholder]}{' '}
                {example === placeholder ? (
                  <span className="muted">Not filled for this type.</span>
                ) : (
                  <span className="muted">
                    Example: <code>{example}</code>
                  </span>
                )}
              </dd>
            </div>
          );
        })}
      </dl>
    </section>
  );
}

/** The push as a phone would show it, with the example values. */
function Preview() {
  const { type, title, body } = useTyped();
  const values = exampleValues(type);
  const headingId = useId();
  return (
    <section aria-labelledby={headingId} className="preview">
      <h3 id={headingId}>Preview</h3>
      <p className="hint">
        With example values for a {type && type !== GENERIC_TYPE ? type : values.type} notification.
      </p>
      <div className="push-preview">
        <p className="push-title">
          {fillTemplate(title, values) || <span className="muted">(no title)</span>}
        </p>
        <p className="push-body">{fillTemplate(body, values) || <span className="muted">(no body)</span>}</p>
      </div>
    </section>
  );
}
