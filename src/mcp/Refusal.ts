/** A tool call refused before it reaches the service: the field at fault, as a 400 would name it. */
export class ToolRefusal extends Error {
  override readonly name = "ToolRefusal"
  constructor(readonly field: string, override readonly message: string) {
    super(message)
  }
}

export const refusal = (field: string, message: string) => new ToolRefusal(field, `${field}: ${message}`)
