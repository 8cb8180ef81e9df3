"""The ``sparsegrad demo`` command: click-through-rate prediction end to end.

- :mod:`sparsegrad.demo.data`: a synthetic click-through-rate data set
  (:func:`~sparsegrad.demo.data.make_ctr_dataset`) and a loader for
  svmlight/libsvm files (:func:`~sparsegrad.demo.data.load_svmlight`);
- :mod:`sparsegrad.demo.metrics`: held-out log-loss and ROC AUC;
- :mod:`sparsegrad.demo.models`: an FTRL-Proximal logistic regression over
  ``scipy.sparse`` features and an embedding model with a small MLP;
- :mod:`sparsegrad.demo.train`: the training loop and its report;
- :mod:`sparsegrad.demo.distributed`: the same loop on the ranks of an MPI
  job (``mpiexec -n 2 python -m sparsegrad demo``);
- :mod:`sparsegrad.demo.cli`: the command line.

Nothing in the library imports this package; it imports only public names.
"""
