"""The package as a whole: API, contracts, reliability, truth and accuracy, packaging, README, same reports."""
