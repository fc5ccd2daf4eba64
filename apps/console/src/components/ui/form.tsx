import { zodResolver } from '@hookform/resolvers/zod';
import { type ComponentProps, type ReactNode, useId } from 'react';
import {
  type FieldValues,
  FormProvider,
  type RegisterOptions,
  type SubmitHandler,
  type UseFormProps,
  type UseFormRegisterReturn,
  type UseFormReturn,
  useForm,
  useFormContext,
} from 'react-hook-form';
import type { z } from 'zod';

/**
 * The one form wrapper: react-hook-form validated by a zod schema (the contract's), with the
 * form's methods in context so each field wires its label, description, error and ARIA once.
 */
export function Form<S extends z.ZodType<FieldValues, FieldValues>>({
  schema,
  onSubmit,
  options,
  children,
  ...props
}: {
  schema: S;
  onSubmit: (values: z.output<S>, methods: UseFormReturn<z.input<S>, unknown, z.output<S>>) => void;
  options?: Omit<UseFormProps<z.input<S>, unknown, z.output<S>>, 'resolver'>;
  children: (methods: UseFormReturn<z.input<S>, unknown, z.output<S>>) => ReactNode;
} & Omit<ComponentProps<'form'>, 'onSubmit' | 'children'>) {
  const methods = useForm<z.input<S>, unknown, z.output<S>>({ ...options, resolver: zodResolver(schema) });
  const submit: SubmitHandler<z.output<S>> = (values) => onSubmit(values, methods);
  return (
    <FormProvider {...methods}>
      {/* noValidate: the schema gives the messages, the same ones the server would. */}
      <form noValidate {...props} onSubmit={methods.handleSubmit(submit)}>
        {children(methods)}
      </form>
    </FormProvider>
  );
}

interface FieldProps {
  name: string;
  label: ReactNode;
  description?: ReactNode;
  /** Passed to `register`, e.g. an onChange that submits the form. */
  registerOptions?: RegisterOptions;
  className?: string | undefined;
}

type ControlProps = UseFormRegisterReturn & {
  id: string;
  'aria-invalid': boolean | undefined;
  'aria-describedby': string | undefined;
};

/**
 * Label, description and error around one control. The control gets the rest of the field's
 * props, then the id, ARIA and `register` props that tie it to them (so those win).
 */
function Field<P extends FieldProps>({
  props: { name, label, description, registerOptions, className, ...rest },
  children,
}: {
  props: P;
  children: (control: Omit<P, keyof FieldProps> & ControlProps) => ReactNode;
}) {
  const { register, getFieldState, formState } = useFormContext();
  const id = useId();
  const { error } = getFieldState(name, formState);
  const message = error?.message;
  const descriptionId = description ? `${id}-description` : undefined;
  const errorId = message ? `${id}-error` : undefined;
  const control = {
    ...rest,
    id,
    'aria-invalid': error ? true : undefined,
    'aria-describedby': [descriptionId, errorId].filter(Boolean).join(' ') || undefined,
    ...register(name, registerOptions),
  };
  return (
    <div className={['field', message ? 'field-invalid' : '', className ?? ''].filter(Boolean).join(' ')}>
      <label htmlFor={id}>{label}</label>
      {description ? (
        <p className="field-description" id={descriptionId}>
          {description}
        </p>
      ) : null}
      {children(control)}
      {message ? (
        <p className="field-error" id={errorId}>
          {message}
        </p>
      ) : null}
    </div>
  );
}

/** A text input registered with the surrounding Form. */
export function TextField(props: FieldProps & Omit<ComponentProps<'input'>, 'name' | 'id'>) {
  return <Field props={props}>{(input) => <input type="text" {...input} />}</Field>;
}

/** A select registered with the surrounding Form. */
export function SelectField({
  options,
  ...props
}: FieldProps & {
  options: readonly { value: string; label: string }[];
} & Omit<ComponentProps<'select'>, 'name' | 'id' | 'children'>) {
  return (
    <Field props={props}>
      {(select) => (
        <select {...select}>
          {options.map((option) => (
            <option key={option.value} value={option.value}>
              {option.label}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}

/** A multi-line text input registered with the surrounding Form. */
export function TextAreaField(props: FieldProps & Omit<ComponentProps<'textarea'>, 'name' | 'id'>) {
  return <Field props={props}>{(textarea) => <textarea {...textarea} />}</Field>;
}

/** A file input registered with the surrounding Form: its value is the FileList chosen. */
export function FileField(props: FieldProps & Omit<ComponentProps<'input'>, 'name' | 'id' | 'type'>) {
  return <Field props={props}>{(input) => <input type="file" {...input} />}</Field>;
}
