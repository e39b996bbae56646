package results

// FieldErrorKind is the kind of a row's error (an activities/api/errkind Kind), which the Issue workflow records
// when the failure has one; its class (errkind.ClassOf) says whose failure it is.
const FieldErrorKind = "error_kind"
