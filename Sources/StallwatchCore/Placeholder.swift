// Placeholder: replaced by the data model.
