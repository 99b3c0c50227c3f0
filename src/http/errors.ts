/** Errors the HTTP layer answers with a JSON body `{ error, message, parameter? }` and a status. */
export class HttpError extends Error {
  readonly status: number;
  readonly code: string;
  /** The query parameter at fault, for 400 answers. */
  readonly parameter: string | undefined;

  constructor(status: number, code: string, message: string, parameter?: string) {
    super(message);
    this.name = 'HttpError';
    this.status = status;
    this.code = code;
    this.parameter = parameter;
  }

  toJSON(): { error: string; message: string; parameter?: string } {
    return this.parameter === undefined
      ? { error: this.code, message: this.message }
      : { error: this.code, message: this.message, parameter: this.parameter };
  }
}

export const badRequest = (parameter: string, message: string): HttpError => new HttpError(400, 'bad_request', message, parameter);
export const notFound = (message: string): HttpError => new HttpError(404, 'not_found', message);
