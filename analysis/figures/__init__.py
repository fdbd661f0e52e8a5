"""One function per figure kind; each figure carries a stable id (``fig.get_label()``)."""
