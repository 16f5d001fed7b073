"""What people run besides validation: explain, export, fmt, new, import-hf, the site. Each uses
the layers below; none imports the CLI."""
