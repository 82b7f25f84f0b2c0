/** What the server refused in a field, under that field (the field names it in aria-describedby). */
export function FieldError({ id, message }: { id: string; message: string | undefined }) {
  return message === undefined ? null : (
    <p id={id} className="error field-error">
      {message}
    </p>
  );
}
