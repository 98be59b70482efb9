;;; jax-lsp-eglot.el --- jax-lsp with eglot  -*- lexical-binding: t -*-
;; Emacs 29+ has eglot built in; on Emacs 28: M-x package-install RET eglot (or Debian's
;; elpa-eglot).  Load this file from your init, then M-x eglot in a Python buffer.
;;
;; eglot runs ONE server per buffer: with this entry jax-lsp replaces your Python server in
;; python-mode buffers.  jax-lsp answers only for JAX remat policies (diagnostics, fixes,
;; hover on policies); keep pyright/basedpyright through another mode or lsp-mode if you
;; need both.

(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs
               '((python-mode python-ts-mode) . ("jax-lsp" "serve"))))

;; Settings, answered to workspace/configuration (section "jax-lsp"); every key is optional.
(setq-default eglot-workspace-configuration
              '((:jax-lsp . (:ignore [] :severity (:JAX104 "error")))))

(provide 'jax-lsp-eglot)
;;; jax-lsp-eglot.el ends here
