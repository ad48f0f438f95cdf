// Placeholder: the GalleryScroll sample (issue 8) is being written.
